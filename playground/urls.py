from django.urls import path

from playground import views as playground

app_name = "playground"

urlpatterns = [
    path("", playground.choose_channel, name="index"),
    path("<slug:slug>/", playground.channel_playground, name="channel"),
]
